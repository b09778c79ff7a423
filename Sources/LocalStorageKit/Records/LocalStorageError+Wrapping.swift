extension LocalStorageError {
    /// Maps any error thrown inside the library to the public error type.
    static func wrapping(_ error: any Error) -> LocalStorageError {
        switch error {
        case let error as LocalStorageError: return error
        case is ReserveRefused: return .storageFull
        case let error as LMDBError:
            if error.isMapFull || error.isDiskFull { return .storageFull }
            return .storageError(code: error.code, message: error.description)
        case let error as EncodingError: return .encodingFailed(reason: String(describing: error))
        case let error as DecodingError: return .decodingFailed(reason: String(describing: error))
        default: return .storageError(code: -1, message: String(describing: error))
        }
    }
}
