extension IndexValue {
    var kindName: String {
        switch self {
        case .string: "a string"
        case .number: "a number"
        }
    }
}
