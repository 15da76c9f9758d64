import HaulKit

@main
struct SessionBench {
    static func main() async {
        print("not written yet")
    }
}
