import ConcordDomain

/// Who presented a request's token, once authenticated.
public enum AuthenticatedCaller: Sendable {
    case device(DeviceRef)
    case account(accountID: String)
    case admin

    /// The kind of token, as routes declare it.
    public var kind: RouteCaller {
        switch self {
        case .device: .device
        case .account: .account
        case .admin: .admin
        }
    }

    /// Its rate-limit bucket (`rateLimits.perCaller`): its device or account, or the admin.
    var rateKey: String {
        switch self {
        case .device(let device): "device:" + device.deviceID
        case .account(let accountID): "account:" + accountID
        case .admin: "admin"
        }
    }

    /// The account its idempotency keys belong to (deleted with it); nil for the admin.
    var accountID: String? {
        switch self {
        case .device(let device): device.accountID
        case .account(let accountID): accountID
        case .admin: nil
        }
    }
}

/// A kind of caller a route is declared for, and the value its handler is handed: the device,
/// the account's ID, or nothing for the admin. No `any Sendable` is cast back: the value is
/// taken out of `AuthenticatedCaller` by its case.
protocol CallerKind: Sendable {
    associatedtype Value: Sendable
    static var kind: RouteCaller { get }
    /// The value when `caller` is of this kind, else nil (`403`).
    static func value(of caller: AuthenticatedCaller) -> Value?
}

/// Routes for device tokens: the handler gets the `DeviceRef`.
enum DeviceCaller: CallerKind {
    static let kind = RouteCaller.device
    static func value(of caller: AuthenticatedCaller) -> DeviceRef? {
        if case .device(let device) = caller { return device }
        return nil
    }
}

/// Routes for account tokens: the handler gets the account ID.
enum AccountCaller: CallerKind {
    static let kind = RouteCaller.account
    static func value(of caller: AuthenticatedCaller) -> String? {
        if case .account(let accountID) = caller { return accountID }
        return nil
    }
}

/// Routes for an account token or a device token (the API's successor): the handler gets the
/// account and, for a device token, the device (which the service holds to its own ID).
enum AccountOrDeviceCaller: CallerKind {
    static let kind = RouteCaller.accountOrDevice
    static func value(of caller: AuthenticatedCaller) -> (accountID: String, device: DeviceRef?)? {
        switch caller {
        case .account(let accountID): (accountID, nil)
        case .device(let device): (device.accountID, device)
        case .admin: nil
        }
    }
}

/// Routes for the admin token: the handler gets nothing more.
enum AdminCaller: CallerKind {
    static let kind = RouteCaller.admin
    static func value(of caller: AuthenticatedCaller) -> Void? {
        if case .admin = caller { return () }
        return nil
    }
}

/// The context of an authenticated request: the request's own, and its caller already typed for
/// the route (after Hummingbird's `ChildRequestContext`: built from the parent context by the
/// authentication stage, or not at all).
struct CallerContext<Kind: CallerKind>: Sendable {
    /// The request (with its idempotency scope once the idempotency stage claimed its key).
    var request: RequestContext
    let caller: AuthenticatedCaller
    let value: Kind.Value

    /// Nil when `caller` is not of `Kind`.
    init?(_ request: RequestContext, _ caller: AuthenticatedCaller) {
        guard let value = Kind.value(of: caller) else { return nil }
        self.request = request
        self.caller = caller
        self.value = value
    }
}
