import PropertyBased
import Testing
@testable import HaulCore

/// Any inserts into a host cache: it never holds more than its limit, always holds what was inserted last, and says
/// "new" exactly for what it did not hold.
@Suite struct BoundedSetTests {
    @Test func anyInsertsStayWithinTheLimitAndKeepTheLast() async {
        await propertyCheck(input: Gen.int(in: 1...8), Gen.int(in: 0...20).array(of: 0...100)) { limit, members in
            var set: Set<Int> = []
            for member in members {
                let held = set.contains(member)
                #expect(set.insert(member, keepingAtMost: limit) == !held)
                #expect(set.contains(member))
                #expect(set.count <= limit)
            }
        }
    }
}
