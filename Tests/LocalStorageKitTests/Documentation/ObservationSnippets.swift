// The code listings of the DocC article "Observation", compiled by the tests (ArticleSnippets.swift in
// this folder for how the listings are checked against the articles).
import Foundation
import LocalStorageKit
import Testing

enum ObservationSnippets {
    struct TaskItem: LocalStorable {
        let id: String
        var title: String
    }

    struct User: LocalStorageIndexed {
        let id: String
        var role: String

        static var storageIndexes: [StorageIndex<User>] { [StorageIndex("role", \.role)] }
    }

    struct Post: LocalStorable {
        let id: String
        var text: String
    }

    static func watchTasks(_ storage: LocalStorage) async {
        // snippet: observation-changes
        for await change in storage.changes(of: TaskItem.self) {
            switch change {
            case .inserted(let task):
                print("Created task: \(task.title)")
            case .updated(let task):
                print("Updated task: \(task.title)")
            case .deleted(let id):
                print("Deleted task ID: \(id)")
            case .expired(let id):
                print("Task expired ID: \(id)")
            case .cleared:
                print("All tasks cleared from cache")
            }
        }
        // snippet-end
    }

    @MainActor
    final class AdminList {
        var admins: [User] = []

        func follow(_ storage: LocalStorage) async throws {
            // snippet: observation-live
            for try await admins in storage.updates(of: User.self, matching: [.equals("role", "admin")]) {
                self.admins = admins
            }
            // snippet-end
        }
    }

    // snippet: observation-view-model
    @MainActor
    final class FeedViewModel {
        var posts: [Post] = []

        func observeFeed(storage: LocalStorage) async {
            do {
                for try await updatedPosts in storage.updates(of: Post.self) {
                    self.posts = updatedPosts
                }
            } catch {
                print("Stream terminated with error: \(error)")
            }
        }
    }
    // snippet-end

    /// Keeps a copy of the users up to date through the change feed.
    final class UserSync {
        let storage: LocalStorage
        var copy: [String: User] = [:]

        init(storage: LocalStorage) {
            self.storage = storage
        }

        func apply(_ change: StorageChange<User>) {
            switch change {
            case .inserted(let user), .updated(let user): copy[user.id] = user
            case .deleted(let id), .expired(let id): copy[id] = nil
            case .cleared: copy = [:]
            }
        }

        func reloadEverything(_ users: [User]) {
            copy = Dictionary(uniqueKeysWithValues: users.map { ($0.id, $0) })
        }

        // snippet: observation-catch-up
        func catchUp(from token: StorageChangeToken) async throws -> StorageChangeToken {
            do {
                let (changes, next) = try await storage.changes(of: User.self, since: token)
                for change in changes {
                    apply(change)
                }
                return next
            } catch LocalStorageError.changeTokenExpired {
                let mark = try await storage.changeToken()
                reloadEverything(try await storage.fetch(User.self))
                return mark
            }
        }
        // snippet-end
    }

    @Suite struct Tests {
        @MainActor @Test func viewModelFollowsTheFeed() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            let viewModel = FeedViewModel()
            // snippet: observation-task
            let observation = Task { await viewModel.observeFeed(storage: storage) }
            // … later:
            observation.cancel()
            // snippet-end
            await observation.value
            let following = Task { await viewModel.observeFeed(storage: storage) }
            try await storage.save(Post(id: "p1", text: "Hello"))
            let deadline = ContinuousClock.now + .seconds(60)
            while viewModel.posts.isEmpty, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            following.cancel()
            #expect(viewModel.posts.map(\.id) == ["p1"])
        }

        @Test func changeFeed() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            // snippet: observation-feed
            let mark = try await storage.changeToken()  // Codable: keep it anywhere
            // … later, even in another process or after a relaunch:
            let (changes, next) = try await storage.changes(of: User.self, since: mark)
            // snippet-end
            #expect(changes.isEmpty)
            #expect(next == mark)
        }

        @Test func catchUp() async throws {
            let storage = try LocalStorage(configuration: .inMemory)
            let sync = UserSync(storage: storage)
            let start = try await storage.changeToken()
            try await storage.save(User(id: "u1", role: "admin"))
            try await storage.save(User(id: "u2", role: "editor"))
            try await storage.delete(User.self, id: "u1")
            let next = try await sync.catchUp(from: start)
            #expect(sync.copy.keys.sorted() == ["u2"])
            #expect(next > start)
        }
    }
}
