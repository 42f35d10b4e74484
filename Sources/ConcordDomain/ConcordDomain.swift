// ConcordDomain module
