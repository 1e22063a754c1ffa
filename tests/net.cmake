# tests of src/net (owner fills in)
