// The peer Concord is measured against: an idiomatic Hummingbird 2 server with the routes the
// benchmarks hit, JSON through Foundation's JSONDecoder/JSONEncoder (Hummingbird's defaults).
//
//   hummingbird-peer [--host 127.0.0.1] [--port 8081]
//
// GET  /health                          → 200 "ok" (text/plain)
// POST /v1/library/cloud-identifiers    → {"mappings":[{"localIdentifier","cloudIdentifier"}...]}
//      cloud identifiers are synthesised from the local ones (no storage), so the peer's cost
//      is HTTP + JSON only: a floor for what a storage-backed Concord route must beat.
// POST /v1/library/local-identifiers    → {"mappings":[{"cloudIdentifier","localIdentifier"}...]}
//      the other direction's echo: each cloud identifier's GUID with "/L0/001" as its local one.
import BenchSupport
import Foundation
import Hummingbird

/// Response type local to this module (a retroactive conformance would warn).
struct MappingAnswer: ResponseEncodable {
    var mappings: [CloudIdentifierMapping]
}

/// Cloud → local, only this peer's: `POST /v1/library/local-identifiers`' body and answer.
struct LocalIdentifiersRequest: Decodable {
    var cloudIdentifiers: [String]
}

struct LocalIdentifierMapping: Encodable {
    var cloudIdentifier: String
    var localIdentifier: String
}

struct LocalMappingAnswer: ResponseEncodable {
    var mappings: [LocalIdentifierMapping]
}

func option(_ name: String, in arguments: [String]) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

let arguments = CommandLine.arguments
let host = option("--host", in: arguments) ?? "127.0.0.1"
guard let port = Int(option("--port", in: arguments) ?? "8081"), (0...65535).contains(port) else {
    FileHandle.standardError.write(Data("usage: hummingbird-peer [--host H] [--port P]\n".utf8))
    exit(2)
}

let router = Router()
router.get("/health") { _, _ in
    "ok"
}
router.post("/v1/library/cloud-identifiers") { request, context -> MappingAnswer in
    let batch = try await request.decode(as: CloudIdentifiersRequest.self, context: context)
    return MappingAnswer(mappings: batch.localIdentifiers.map {
        CloudIdentifierMapping(localIdentifier: $0, cloudIdentifier: Fixtures.cloudIdentifier(for: $0))
    })
}
router.post("/v1/library/local-identifiers") { request, context -> LocalMappingAnswer in
    let batch = try await request.decode(as: LocalIdentifiersRequest.self, context: context)
    return LocalMappingAnswer(mappings: batch.cloudIdentifiers.map {
        LocalIdentifierMapping(cloudIdentifier: $0, localIdentifier: String($0.prefix(36)) + "/L0/001")
    })
}

// Hummingbird's default logger (info level) logs startup only, never per request.
let app = Application(
    router: router,
    configuration: .init(address: .hostname(host, port: port), serverName: "hummingbird-peer")
)
try await app.runService()
