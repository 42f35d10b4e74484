// ConcordStorage module
