import SyncNodeSync

extension BasicAuthenticator {
    /// The credentials of `--user` and `--password` (validated to come together), nil without them.
    init?(user: String?, password: String?) {
        guard let user, let password else { return nil }
        self.init(username: user, password: password)
    }
}
