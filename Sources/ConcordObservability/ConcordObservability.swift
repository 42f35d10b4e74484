// ConcordObservability module
