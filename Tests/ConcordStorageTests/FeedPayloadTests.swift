import ConcordDomain
import Testing

@testable import ConcordStorage

/// The NOTIFY payloads instances exchange: what one sends, another reads back; its own,
/// and anything malformed, it ignores.
@Test(arguments: [
    FeedTopic.journals(accountID: "8C1D5A4E-5B0B-4C43-9F4E-2B1B9F0E7A11"),
    FeedTopic.library(DeviceRef(accountID: "8C1D5A4E-5B0B-4C43-9F4E-2B1B9F0E7A11", deviceID: "0F3E2D1C-AAAA-4BBB-8CCC-DDDDEEEEFFFF")),
])
func feedPayloadsRoundTripBetweenInstances(_ topic: FeedTopic) {
    let sender = PostgresFeedListener(parameters: [], signals: FeedSignals(), instanceID: "one")
    let payload = sender.payload(topic)
    #expect(PostgresFeedListener.topic(payload, skipping: "two") == topic)
    #expect(PostgresFeedListener.topic(payload, skipping: "one") == nil)
}

@Test(arguments: ["", "one", "one j", "two x A", "two j A B", "two l A", "two l A B C"])
func malformedFeedPayloadsAreIgnored(_ payload: String) {
    #expect(PostgresFeedListener.topic(payload, skipping: "one") == nil)
}
