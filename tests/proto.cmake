# tests of src/proto (owner fills in)
