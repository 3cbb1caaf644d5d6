// tls tests: being written.
