"""Pure logic of predigest: data in, data out, no I/O."""
