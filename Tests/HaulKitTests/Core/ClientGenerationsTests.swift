import PropertyBased
import Testing
@testable import HaulCore

/// Any sequence of requests beginning and ending over any origins: a generation serves at most `maxOrigins` of them,
/// a known origin stays on its generation, and each generation but the current one is reported for shutting down
/// exactly once, when its last request has ended, never before.
@Suite struct ClientGenerationsTests {
    @Test func anyRequestsKeepTheGenerationsRules() async {
        let steps = zip(Gen.bool, Gen.int(in: 0...40), Gen.int(in: 0...1_000)).array(of: 1...200)
        await propertyCheck(input: Gen.int(in: 1...6), steps) { maxOrigins, steps in
            var generations = ClientGenerations<Int>(maxOrigins: maxOrigins)
            var inFlight: [Int] = []    // the generation of each request in flight
            var served: [Int: Set<Int>] = [:]
            var shutDown: Set<Int> = []
            func noteShutDown(_ generation: Int?) {
                guard let generation else { return }
                #expect(generation != generations.current)
                #expect(!inFlight.contains(generation), "generation \(generation) shut down with a request in flight")
                #expect(shutDown.insert(generation).inserted, "generation \(generation) shut down twice")
            }
            for (begins, origin, pick) in steps {
                if begins || inFlight.isEmpty {
                    let before = generations.current
                    let knew = served[before, default: []].contains(origin)
                    let lease = generations.lease(origin)
                    #expect(lease.generation == generations.current)
                    if knew { #expect(lease.generation == before) }
                    #expect(lease.generation == before || lease.generation == before + 1)
                    served[lease.generation, default: []].insert(origin)
                    #expect(served[lease.generation, default: []].count <= maxOrigins)
                    inFlight.append(lease.generation)
                    noteShutDown(lease.retired)
                } else {
                    let ended = inFlight.remove(at: pick % inFlight.count)
                    noteShutDown(generations.release(ended))
                }
                #expect(generations.generationsInFlight == Set(inFlight))
            }
            while let ended = inFlight.popLast() { noteShutDown(generations.release(ended)) }
            // Every generation before the current one was shut down once its requests ended.
            #expect(shutDown == Set(0..<generations.current).filter { served[$0] != nil })
        }
    }
}
