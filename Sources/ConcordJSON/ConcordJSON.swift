// ConcordJSON module
