# tests of src/daemon (owner fills in)
