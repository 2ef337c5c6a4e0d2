"""`advisor selftest`: does advisor measure right on this machine."""
