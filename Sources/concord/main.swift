import ConcordApp
