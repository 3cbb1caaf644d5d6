// bad_input tests: being written.
