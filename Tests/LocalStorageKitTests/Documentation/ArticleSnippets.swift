// The code listings of the DocC articles (Sources/LocalStorageKit/LocalStorageKit.docc), compiled and, where
// they finish on their own, run against in-memory stores, so that the articles cannot drift from the API.
//
// Each listing sits between `// snippet: NAME` and `// snippet-end`; scripts/check-doc-snippets.py (run by
// `make docs`) fails when a ```swift block of an article is not, character for character after removing
// the common indentation, one of these regions, or when a region is used by no article. A listing that
// opens the default on-disk store or loops for ever is compiled only: it lives in a function no test calls.
// Each article's types live in an enum of its own, so that they do not meet the other tests' `Product` or
// `User`. Only the public API is imported, as a user's code would.
//
// Each article has a file of its own here, named for its enum.
