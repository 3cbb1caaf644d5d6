// error_matrix tests: being written.
