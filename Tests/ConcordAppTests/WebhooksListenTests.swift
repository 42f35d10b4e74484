@testable import ConcordApp
import ConcordDomain
import ConcordHTTP
import Foundation
import Synchronization
import Testing

/// `concord webhooks listen` over a real socket, its receiver's rules as a table, and the
/// webhook key file.
@Suite struct WebhooksListenTests {
    static let secret = WebhookSecret(parsing: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")!

    static func event(id: String, type: String = "library.changed") -> String {
        #"{"id":"\#(id)","type":"\#(type)","timestamp":"2026-11-27T18:00:00Z","data":{"accountID":"A","deviceID":"D","changeToken":"t1"}}"#
    }

    /// Standard Webhooks headers for `body`, signed with `secret` at `timestamp`.
    static func signedHeaders(id: String, body: String, secret: WebhookSecret = secret, timestamp: Int = Int(time(nil))) -> [String] {
        ["Content-Type: application/json", "webhook-id: \(id)", "webhook-timestamp: \(timestamp)",
         "webhook-signature: " + WebhookSigning.sign(secret: secret, id: id, timestamp: timestamp, body: Array(body.utf8))]
    }

    /// Lines printed from the listener's thread, read from the test's.
    final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { self.lines.withLock { $0.append(line) } }
        var all: [String] { self.lines.withLock { $0 } }
    }

    /// A listener on a free loopback port, serving on its own thread until `stop`.
    final class Running: Sendable {
        let listener: WebhookListener
        let events = Lines()
        let notes = Lines()
        private let finished = DispatchSemaphore(value: 0)

        init(secrets: [WebhookSecret] = [WebhooksListenTests.secret]) throws {
            let events = self.events, notes = self.notes
            self.listener = try WebhookListener(host: "127.0.0.1", port: 0, receiver: WebhookReceiver(secrets: secrets),
                                                printEvent: { events.append($0) }, printNote: { notes.append($0) })
            let listener = self.listener, finished = self.finished
            Thread.detachNewThread { listener.serve(); finished.signal() }
        }

        var port: Int { self.listener.port }

        func stop() {
            self.listener.stop()
            self.finished.wait()
        }
    }

    @Test func verifiesAnswersAndPrintsEachEventOnce() throws {
        let running = try Running()
        defer { running.stop() }
        let id = "0193A5C2-7E41-7B3A-9C1D-5F2E8A6B4C10"
        let body = Self.event(id: id)

        let first = try rawRequest(port: running.port, "POST", "/", headers: Self.signedHeaders(id: id, body: body), body: body)
        #expect(first.status == 204)
        #expect(running.events.all == [#"library.changed 0193A5C2-7E41-7B3A-9C1D-5F2E8A6B4C10 {"accountID":"A","deviceID":"D","changeToken":"t1"}"#])

        // A retry of the same event, signed anew a second later: answered, not printed again.
        let repeated = try rawRequest(port: running.port, "POST", "/hook", headers: Self.signedHeaders(id: id, body: body, timestamp: Int(time(nil)) + 1), body: body)
        #expect(repeated.status == 204)
        #expect(running.events.all.count == 1)

        // Signed with another secret: 401, nothing printed.
        let forged = try rawRequest(port: running.port, "POST", "/", headers: Self.signedHeaders(id: "other", body: body, secret: .generate()), body: body)
        #expect(forged.status == 401)

        // The body changed after signing: 401.
        let tampered = body.replacingOccurrences(of: "t1", with: "t2")
        let altered = try rawRequest(port: running.port, "POST", "/", headers: Self.signedHeaders(id: "third", body: body), body: tampered)
        #expect(altered.status == 401)

        // No Standard Webhooks headers: 400.
        let bare = try rawRequest(port: running.port, "POST", "/", headers: ["Content-Type: application/json"], body: body)
        #expect(bare.status == 400)

        let get = try rawRequest(port: running.port, "GET", "/")
        #expect(get.status == 405)
        #expect(get.header("Allow") == "POST")

        // A second event still goes through after the refusals.
        let secondID = "0193A5C2-7E41-7B3A-9C1D-5F2E8A6B4C11"
        let second = Self.event(id: secondID, type: "device.deleted")
        #expect(try rawRequest(port: running.port, "POST", "/", headers: Self.signedHeaders(id: secondID, body: second), body: second).status == 204)
        #expect(running.events.all.count == 2)
        #expect(running.events.all.last?.hasPrefix("device.deleted \(secondID) ") == true)
        #expect(running.notes.all.count == 5)   // the repeat and four refusals, on stderr
    }

    @Test func acceptsEitherSecretDuringARotation() throws {
        let previous = WebhookSecret.generate()
        let running = try Running(secrets: [Self.secret, previous])
        defer { running.stop() }
        let body = Self.event(id: "rotated")
        let now = Int(time(nil))
        let header = WebhookSigning.signatureHeader(secrets: [.generate(), previous], id: "rotated", timestamp: now, body: Array(body.utf8))
        let answer = try rawRequest(port: running.port, "POST", "/", headers: ["webhook-id: rotated", "webhook-timestamp: \(now)", "webhook-signature: \(header)"], body: body)
        #expect(answer.status == 204)
        #expect(running.events.all.count == 1)
    }

    struct ReceiveCase: Sendable, CustomTestStringConvertible {
        var name: String
        var method = "POST"
        var headers: [(String, String)]
        var body = WebhooksListenTests.event(id: "E")
        var status: Int
        var testDescription: String { self.name }
    }

    static let now = 1_800_000_000
    static func signature(_ id: String, _ timestamp: Int, _ body: String = event(id: "E")) -> String {
        WebhookSigning.sign(secret: secret, id: id, timestamp: timestamp, body: Array(body.utf8))
    }

    static let receiveCases: [ReceiveCase] = [
        ReceiveCase(name: "signed", headers: [("webhook-id", "E"), ("webhook-timestamp", "\(now)"), ("webhook-signature", signature("E", now))], status: 204),
        ReceiveCase(name: "header names in any case", headers: [("Webhook-Id", "E"), ("WEBHOOK-TIMESTAMP", "\(now)"), ("Webhook-Signature", signature("E", now))], status: 204),
        ReceiveCase(name: "no id", headers: [("webhook-timestamp", "\(now)"), ("webhook-signature", signature("E", now))], status: 400),
        ReceiveCase(name: "no timestamp", headers: [("webhook-id", "E"), ("webhook-signature", signature("E", now))], status: 400),
        ReceiveCase(name: "no signature", headers: [("webhook-id", "E"), ("webhook-timestamp", "\(now)")], status: 400),
        ReceiveCase(name: "timestamp not a number", headers: [("webhook-id", "E"), ("webhook-timestamp", "soon"), ("webhook-signature", signature("E", now))], status: 400),
        ReceiveCase(name: "stale by 6 minutes", headers: [("webhook-id", "E"), ("webhook-timestamp", "\(now - 360)"), ("webhook-signature", signature("E", now - 360))], status: 401),
        ReceiveCase(name: "6 minutes ahead", headers: [("webhook-id", "E"), ("webhook-timestamp", "\(now + 360)"), ("webhook-signature", signature("E", now + 360))], status: 401),
        ReceiveCase(name: "4 minutes old", headers: [("webhook-id", "E"), ("webhook-timestamp", "\(now - 240)"), ("webhook-signature", signature("E", now - 240))], status: 204),
        ReceiveCase(name: "signed for another id", headers: [("webhook-id", "F"), ("webhook-timestamp", "\(now)"), ("webhook-signature", signature("E", now))], status: 401),
        ReceiveCase(name: "signed for another time", headers: [("webhook-id", "E"), ("webhook-timestamp", "\(now)"), ("webhook-signature", signature("E", now - 1))], status: 401),
        ReceiveCase(name: "PUT", method: "PUT", headers: [("webhook-id", "E"), ("webhook-timestamp", "\(now)"), ("webhook-signature", signature("E", now))], status: 405),
    ]

    @Test(arguments: receiveCases)
    func receiverAnswers(_ c: ReceiveCase) {
        var receiver = WebhookReceiver(secrets: [Self.secret])
        let outcome = receiver.receive(method: c.method, headers: HTTPHeaders(c.headers.map { (name: $0.0, value: $0.1) }),
                                       body: Array(c.body.utf8), now: Self.now)
        #expect(outcome.status == c.status)
    }

    @Test func describesEventsAndPrintsAnythingElseAsItCame() {
        #expect(WebhookReceiver.describe(id: "P", body: Array(#"{"id":"P","type":"webhook.ping","timestamp":"x","data":{"webhookID":"W"}}"#.utf8))
                == #"webhook.ping P {"webhookID":"W"}"#)
        #expect(WebhookReceiver.describe(id: "Q", body: Array("not json".utf8)) == "? Q not json")
        #expect(WebhookReceiver.describe(id: "R", body: Array(#"{"type":"x.y"}"#.utf8)) == "x.y R null")
    }

    @Test(arguments: [
        ["listen"],                                                   // no port, no secret
        ["listen", "--port", "0"],                                    // no secret
        ["listen", "--port", "0", "--secret", "not-a-secret"],
        ["listen", "--port", "70000", "--secret", WebhooksListenTests.secret.text],
        ["listen", "--port", "0", "--secret", WebhooksListenTests.secret.text, "--verbose", "1"],
        ["serve"],
        [],
    ])
    func usageErrorsExitWith2(_ arguments: [String]) {
        #expect(WebhooksCommand.run(arguments, environment: [:]) == 2)
    }
}

@Suite struct WebhookKeyFileTests {
    static func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("webhook-key-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func generatesPrivatelyOnceThenReadsItBack() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (key, generated) = try WebhookKeyFile.loadOrCreate(directory: directory)
        let path = directory + "/webhook-key"
        #expect(generated == path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == key.hex + "\n")

        let (again, generatedAgain) = try WebhookKeyFile.loadOrCreate(directory: directory)
        #expect(again == key)
        #expect(generatedAgain == nil)
    }

    @Test func aDamagedFileStopsTheStartRatherThanBeingReplaced() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/webhook-key"
        try "not a key\n".write(toFile: path, atomically: false, encoding: .utf8)
        #expect(throws: StartupError.self) { try WebhookKeyFile.loadOrCreate(directory: directory) }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "not a key\n")
    }

    @Test func aConfiguredKeyWinsAndMustBe64HexDigits() throws {
        let hex = String(repeating: "ab", count: 32)
        let (key, generated) = try WebhookKeyFile.resolve(configured: hex, database: .sqlite(path: "/nonexistent/db.sqlite"), logger: nil)
        #expect(key.hex == hex)
        #expect(generated == nil)
        #expect(throws: StartupError.self) {
            try WebhookKeyFile.resolve(configured: "abc", database: .sqlite(path: "/nonexistent/db.sqlite"), logger: nil)
        }
    }
}
