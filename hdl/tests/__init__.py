"""RTL tests (a package, so that test_<component>.py may share names with sw/tests)."""
