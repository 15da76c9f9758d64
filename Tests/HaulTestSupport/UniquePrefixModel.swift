/// The unique-prefix rule of `haul ls`, written the plain way as the tests' model (``TaskIdIndex`` is the one
/// implementation): sort the ids; an id's longest common prefix with any other is shared with a neighbour in that
/// order; its prefix is one character longer than that, at least `minimum`, and the whole id when it is the start of
/// another (or appears twice).
public enum UniquePrefixModel {
    public static func uniquePrefixes(_ ids: [String], minimum: Int = 8) -> [String] {
        let characters = ids.map(Array.init)
        let order = characters.indices.sorted { characters[$0].lexicographicallyPrecedes(characters[$1]) }
        var needed = [Int](repeating: max(minimum, 1), count: ids.count)
        for (position, index) in order.enumerated() where position > 0 {
            let previous = order[position - 1]
            var common = 0
            while common < characters[previous].count, common < characters[index].count,
                  characters[previous][common] == characters[index][common] { common += 1 }
            needed[index] = max(needed[index], common + 1)
            needed[previous] = max(needed[previous], common + 1)
        }
        return ids.indices.map { String(characters[$0].prefix(needed[$0])) }
    }
}
