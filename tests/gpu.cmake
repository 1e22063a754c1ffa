# tests of src/gpu (owner fills in)
