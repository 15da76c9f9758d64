import PropertyBased
import Testing
@testable import HaulCore

/// ``FileRemoval``: whatever Haul recorded and whatever the name holds, a file is deleted only when it is a regular
/// file and the very one Haul wrote; nothing at the name is never "kept"; anything else stays, with its reason.
@Suite struct FileRemovalPropertyTests {
    @Test func onlyTheVeryFileHaulWroteIsDeleted() async {
        // Identities drawn from a few, so that equal and unequal ones both come up often.
        let identity = Gen.int(in: 0...3).map { "\($0):\($0 * 7).5" }
        await propertyCheck(count: 500, input: Gen.int(in: 0...4), identity, identity, Gen.int(in: 0...1)) { shape, written, found, regular in
            let recorded: String? = shape % 2 == 0 ? written : nil
            let at: FileRemoval.Found? = shape == 4 ? nil : FileRemoval.Found(identity: found, isRegular: regular == 1)
            let decision = FileRemoval.decide(written: recorded, found: at)
            switch decision {
            case .delete:
                #expect(at?.isRegular == true && recorded != nil && at?.identity == recorded)
            case .nothingThere:
                #expect(at == nil)
            case .keep(.notAFile):
                #expect(at?.isRegular == false)
            case .keep(.notWrittenByHaul):
                #expect(recorded == nil && at?.isRegular == true)
            case .keep(.replaced):
                #expect(recorded != nil && at?.isRegular == true && at?.identity != recorded)
            }
        }
    }
}
