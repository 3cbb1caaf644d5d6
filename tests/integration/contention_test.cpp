// contention tests: being written.
