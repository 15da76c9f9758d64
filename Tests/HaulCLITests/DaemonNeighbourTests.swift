import Testing

/// The tests of issue 10 ("hostile neighbours"), one suite at a time: several of them load the machine on purpose
/// (thousands of requests, 120 MiB of unfinished lines, 100,000 tasks), and one after another they leave more room
/// to the rest of the test run, whose timing matters to some tests.
@Suite(.serialized) enum DaemonNeighbourTests {}
