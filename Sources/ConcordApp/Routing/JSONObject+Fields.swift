import ConcordJSON

/// Typed field access for request bodies. Every failure is `400 badRequest` naming the
/// field (in the message and in the error's `"field"`). `null` counts as absent.
extension JSONObject {
    public func requiredString(_ name: String) throws(APIError) -> String {
        guard let value = try self.optionalString(name) else { throw APIError.missingField(name) }
        return value
    }

    public func optionalString(_ name: String) throws(APIError) -> String? {
        switch self[name] {
        case .none, .null?: return nil
        case .string(let s)?: return s
        default: throw APIError.wrongType(name, "a string")
        }
    }

    public func requiredInt(_ name: String) throws(APIError) -> Int {
        guard let value = try self.optionalInt(name) else { throw APIError.missingField(name) }
        return value
    }

    /// An integer: a JSON number without a fraction that fits in `Int`.
    public func optionalInt(_ name: String) throws(APIError) -> Int? {
        switch self[name] {
        case .none, .null?: return nil
        case .number(let d)?:
            guard d.rounded() == d, let i = Int(exactly: d) else { throw APIError.wrongType(name, "an integer") }
            return i
        default: throw APIError.wrongType(name, "an integer")
        }
    }

    public func requiredBool(_ name: String) throws(APIError) -> Bool {
        guard let value = try self.optionalBool(name) else { throw APIError.missingField(name) }
        return value
    }

    public func optionalBool(_ name: String) throws(APIError) -> Bool? {
        switch self[name] {
        case .none, .null?: return nil
        case .bool(let b)?: return b
        default: throw APIError.wrongType(name, "a boolean")
        }
    }

    public func requiredArray(_ name: String) throws(APIError) -> [JSONValue] {
        guard let value = try self.optionalArray(name) else { throw APIError.missingField(name) }
        return value
    }

    public func optionalArray(_ name: String) throws(APIError) -> [JSONValue]? {
        switch self[name] {
        case .none, .null?: return nil
        case .array(let a)?: return a
        default: throw APIError.wrongType(name, "an array")
        }
    }

    /// An array whose every element is a string.
    public func requiredStringArray(_ name: String) throws(APIError) -> [String] {
        let array = try self.requiredArray(name)
        var strings: [String] = []
        strings.reserveCapacity(array.count)
        for element in array {
            guard case .string(let s) = element else { throw APIError.wrongType(name, "an array of strings") }
            strings.append(s)
        }
        return strings
    }

    public func requiredObject(_ name: String) throws(APIError) -> JSONObject {
        guard let value = try self.optionalObject(name) else { throw APIError.missingField(name) }
        return value
    }

    public func optionalObject(_ name: String) throws(APIError) -> JSONObject? {
        switch self[name] {
        case .none, .null?: return nil
        case .object(let o)?: return o
        default: throw APIError.wrongType(name, "an object")
        }
    }
}

extension APIError {
    /// `400 badRequest`: a required field is absent.
    public static func missingField(_ name: String) -> APIError {
        .badRequest("The field \"\(name)\" is required.", field: name)
    }

    /// `400 badRequest`: a field has the wrong JSON type; `expected` reads "a string", "an integer"...
    public static func wrongType(_ name: String, _ expected: String) -> APIError {
        .badRequest("The field \"\(name)\" must be \(expected).", field: name)
    }
}
