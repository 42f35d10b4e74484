extension Substring {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace, RFC 9110 §5.6.3):
    /// header values split by hand here and in the app (`Forwarded`, `Authorization`).
    package func trimmingSpaces() -> Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" { s.removeLast() }
        return s
    }
}
