// safeguards tests: being written.
