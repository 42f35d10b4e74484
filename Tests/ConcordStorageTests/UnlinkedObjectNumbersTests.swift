import ConcordDomain
@testable import ConcordStorage
import Testing

/// The objects a PostgreSQL transaction found unlinked (`UnlinkedObjectNumbers`): known until the
/// transaction changes the mapping, except through a change made `keeping` them.
@Suite struct UnlinkedObjectNumbersTests {
    enum Step {
        /// A lookup on the device finding these objects unlinked (local identifier, number).
        case lookup(device: Int64, [(String, Int64)])
        case change
        case changeKeeping
        /// `take` on the device: the number expected.
        case take(String, device: Int64, Int64?)
    }

    @Test(arguments: [
        ("taken once", [.lookup(device: 1, [("a", 5), ("b", 6)]), .take("a", device: 1, 5), .take("a", device: 1, nil), .take("b", device: 1, 6)]),
        ("another device's take", [.lookup(device: 1, [("a", 5)]), .take("a", device: 2, nil), .take("a", device: 1, 5)]),
        ("a change forgets", [.lookup(device: 1, [("a", 5)]), .change, .take("a", device: 1, nil)]),
        ("a change keeping them", [.lookup(device: 1, [("a", 5)]), .changeKeeping, .take("a", device: 1, 5)]),
        ("a lookup on another device forgets", [.lookup(device: 1, [("a", 5)]), .lookup(device: 2, [("b", 7)]), .take("a", device: 1, nil), .take("b", device: 2, 7)]),
        ("lookups on one device add up", [.lookup(device: 1, [("a", 5)]), .lookup(device: 1, [("b", 6)]), .take("a", device: 1, 5), .take("b", device: 1, 6)]),
        // NFC and NFD spellings are different identifiers.
        ("by bytes", [.lookup(device: 1, [("\u{E9}", 5)]), .take("e\u{301}", device: 1, nil), .take("\u{E9}", device: 1, 5)]),
    ] as [(String, [Step])])
    func objectsStayKnownUntilAChange(_ name: String, _ steps: [Step]) {
        let observers = TransactionObservers()
        let unlinked = UnlinkedObjectNumbers()
        for step in steps {
            switch step {
            case let .lookup(device, found):
                let numbers = unlinked.lookup(device: device, observers: observers)
                for (id, number) in found { numbers.add(id, number: number) }
            case .change:
                observers.didChange(.dropAllLinks(device: "d"))
            case .changeKeeping:
                unlinked.keeping { observers.didChange(.insertRecords([])) }
            case let .take(id, device, expected):
                #expect(unlinked.take(id, device: device) == expected, "\(name): take \(id)")
            }
        }
    }
}
