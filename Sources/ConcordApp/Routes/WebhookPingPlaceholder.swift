import ConcordDomain

// Stands in for the delivery engine's ping until it is wired (this file goes then).
extension AppContext {
    func webhookPing(_ owner: WebhookOwner, id: String) throws -> WebhookPingResult {
        throw DomainError.internalError(message: "webhook ping is not wired yet")
    }
}
