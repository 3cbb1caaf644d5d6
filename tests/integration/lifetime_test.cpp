// lifetime tests: being written.
