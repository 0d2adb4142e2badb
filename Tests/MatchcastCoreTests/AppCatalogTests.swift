import Testing
@testable import MatchcastCore

/// The catalog of the apps one deployment serves: lookups by id and by topic, what the constructor leaves out, device
/// ids carrying their app (`<app>:dev_…`, the default app's plain `dev_…`), the topic of each device's deliveries
/// (none for an app not served), the problems `apps:` can have, and which ids are app ids.
@Suite("Apps: the catalog, device ids and their topics")
struct AppCatalogTests {
    fileprivate typealias F = AppsFixture

    @Test("apps by id and by topic, the default app first; a bundle id is not a topic")
    func lookups() {
        let catalog = F.catalog
        #expect(catalog.apps.map(\.id) == ["default", "fantasy", "kids"])
        #expect(catalog.hasSeveral)
        #expect(catalog.defaultApp.id == "default" && catalog.defaultApp.bundleId == "com.example.scores")
        #expect(catalog.defaultApp.topic == F.scoresTopic)
        #expect(catalog.app(id: "fantasy")?.bundleId == "com.example.fantasy")
        #expect(catalog.app(id: "fantasy")?.topic == F.fantasyTopic)
        #expect(catalog.app(id: "default")?.bundleId == "com.example.scores")
        // A substring works as an id (a device id's app part).
        let deviceId = "kids:dev_1"
        #expect(catalog.app(id: deviceId.prefix(4))?.bundleId == "com.example.kids")
        #expect(catalog.app(id: "Fantasy") == nil && catalog.app(id: "") == nil && catalog.app(id: "sports") == nil)

        #expect(catalog.app(topic: F.fantasyTopic)?.id == "fantasy")
        #expect(catalog.app(topic: F.kidsTopic)?.id == "kids")
        #expect(catalog.app(topic: F.scoresTopic)?.id == "default")
        #expect(catalog.app(topic: "com.example.fantasy") == nil, "a bundle id is not a topic")
        #expect(catalog.app(topic: "fantasy") == nil)

        let alone = AppCatalog(defaultBundleId: "com.example.scores")
        #expect(!alone.hasSeveral)
        #expect(alone.apps.map(\.id) == ["default"])
        #expect(alone.app(topic: F.scoresTopic)?.id == "default" && alone.app(topic: F.fantasyTopic) == nil)
    }

    @Test("an app with the default app's id, an id given twice or a bundle id taken is left out; the first one stays")
    func constructorLeavesOutClashes() {
        let catalog = AppCatalog(defaultBundleId: "com.example.scores", others: [
            AppCatalog.App(id: "default", bundleId: "com.example.other"),
            AppCatalog.App(id: "fantasy", bundleId: "com.example.fantasy"),
            AppCatalog.App(id: "fantasy", bundleId: "com.example.fantasy2"),
            AppCatalog.App(id: "copy", bundleId: "com.example.scores"),
            AppCatalog.App(id: "twin", bundleId: "com.example.fantasy"),
            AppCatalog.App(id: "kids", bundleId: "com.example.kids"),
        ])
        #expect(catalog.apps.map(\.id) == ["default", "fantasy", "kids"])
        #expect(catalog.app(id: "default")?.bundleId == "com.example.scores", "the top level's default app stays")
        #expect(catalog.app(id: "fantasy")?.bundleId == "com.example.fantasy", "the first fantasy stays")
        #expect(catalog.app(topic: "com.example.other.push-type.liveactivity") == nil)
        #expect(catalog.app(topic: "com.example.fantasy2.push-type.liveactivity") == nil)
        #expect(catalog.app(topic: F.scoresTopic)?.id == "default")
        #expect(catalog.app(topic: F.fantasyTopic)?.id == "fantasy")
        #expect(catalog.app(id: "copy") == nil && catalog.app(id: "twin") == nil)
    }

    @Test("a device id carries its app: made and read back, the default app's plain")
    func deviceIdRoundTrip() {
        let base = "dev_01JSA4Q7V0ZJ3W9K2M5N8P1R4T"
        #expect(AppCatalog.deviceId(app: "fantasy", base: base) == "fantasy:dev_01JSA4Q7V0ZJ3W9K2M5N8P1R4T")
        #expect(AppCatalog.deviceId(app: "default", base: base) == base, "the default app's ids are as before apps")
        for app in ["fantasy", "kids", "a", "my-app-2"] {
            let id = AppCatalog.deviceId(app: app, base: base)
            #expect(AppCatalog.appId(ofDevice: id).map(String.init) == app)
            #expect(AppCatalog.device(id, belongsTo: app))
            #expect(!AppCatalog.device(id, belongsTo: "default"))
            #expect(id.hasSuffix(base))
        }
        #expect(AppCatalog.appId(ofDevice: base) == nil)
        #expect(AppCatalog.appId(ofDevice: "kids:dev_1:x") == "kids", "the app is what comes before the first colon")
    }

    @Test("a device belongs to its own app only: not to an app whose id starts the same, not to the default app")
    func belonging() {
        #expect(AppCatalog.device("dev_1", belongsTo: "default"))
        #expect(!AppCatalog.device("dev_1", belongsTo: "fantasy"))
        #expect(AppCatalog.device("fantasy:dev_1", belongsTo: "fantasy"))
        #expect(!AppCatalog.device("fantasy:dev_1", belongsTo: "kids"))
        #expect(!AppCatalog.device("fantasy-2:dev_1", belongsTo: "fantasy"))
        #expect(!AppCatalog.device("fantasy:dev_1", belongsTo: "fantasy-2"))
        #expect(!AppCatalog.device("fantasy:dev_1", belongsTo: "fantasy:dev_1"))
        #expect(!AppCatalog.device("dev_1", belongsTo: "dev_1"))
    }

    @Test("each device's deliveries carry its app's topic; a device of an app not served gets none")
    func topicOfDevice() {
        let catalog = F.catalog
        #expect(catalog.topic(ofDevice: "dev_1") == F.scoresTopic)
        #expect(catalog.topic(ofDevice: "fantasy:dev_1") == F.fantasyTopic)
        #expect(catalog.topic(ofDevice: "kids:dev_2") == F.kidsTopic)
        #expect(catalog.topic(ofDevice: "sports:dev_3") == nil, "nothing is sent to it, not with another app's key")
    }

    @Test("served alone, the default app's devices get its topic; a device of an app taken out still gets none")
    func topicOfDeviceWithTheDefaultAppAlone() {
        let alone = AppCatalog(defaultBundleId: "com.example.scores")
        #expect(alone.topic(ofDevice: "dev_1") == F.scoresTopic)
        // Every app but the default taken out of the configuration: its devices' pushes must not take the default
        // app's topic (and with it the default app's credentials).
        #expect(alone.topic(ofDevice: "fantasy:dev_1") == nil)
    }

    @Test("problems: none for distinct apps; one line per bad id, id given twice, 'default', shared bundle id")
    func problems() {
        let fantasy = AppCatalog.App(id: "fantasy", bundleId: "com.example.fantasy")
        let kids = AppCatalog.App(id: "kids", bundleId: "com.example.kids")
        #expect(AppCatalog.problems(defaultBundleId: "com.example.scores", others: []) == [])
        #expect(AppCatalog.problems(defaultBundleId: "com.example.scores", others: [fantasy, kids]) == [])

        let badId = AppCatalog.problems(
            defaultBundleId: "com.example.scores", others: [AppCatalog.App(id: "Fantasy", bundleId: "com.example.fantasy")])
        #expect(badId == ["'Fantasy' is not an app id (1 to 32 lower-case letters, digits and -, starting with a letter or digit)"])

        let twice = AppCatalog.problems(
            defaultBundleId: "com.example.scores", others: [fantasy, AppCatalog.App(id: "fantasy", bundleId: "com.example.f2")])
        #expect(twice == ["app 'fantasy' is given twice"])

        let defaultId = AppCatalog.problems(
            defaultBundleId: "com.example.scores", others: [AppCatalog.App(id: "default", bundleId: "com.example.other")])
        #expect(defaultId == ["'default' is the id of the app configured at the top level"])

        let sameAsDefault = AppCatalog.problems(
            defaultBundleId: "com.example.scores", others: [AppCatalog.App(id: "copy", bundleId: "com.example.scores")])
        #expect(sameAsDefault == [
            "apps 'default' and 'copy' have the same bundle id com.example.scores: a push's topic must name one app",
        ])

        let sameAsOther = AppCatalog.problems(
            defaultBundleId: "com.example.scores", others: [fantasy, kids, AppCatalog.App(id: "twin", bundleId: "com.example.fantasy")])
        #expect(sameAsOther == [
            "apps 'fantasy' and 'twin' have the same bundle id com.example.fantasy: a push's topic must name one app",
        ])
    }

    @Test("problems: every problem of every app is named, in order, with long ids and bundle ids cut short")
    func severalProblems() {
        let long = String(repeating: "x", count: 100)
        let problems = AppCatalog.problems(defaultBundleId: "com.example.scores", others: [
            AppCatalog.App(id: "default", bundleId: "com.example.scores"),  // the default's id and its bundle id
            AppCatalog.App(id: long, bundleId: "com.example.long"),
            AppCatalog.App(id: "kids", bundleId: "com.example.kids"),
            AppCatalog.App(id: "kids", bundleId: "com.example.kids"),  // twice, and its bundle id again
        ])
        #expect(problems.count == 5, "\(problems)")
        guard problems.count == 5 else { return }
        #expect(problems[0].hasPrefix("'default' is the id"))
        #expect(problems[1].contains("'default' and 'default'") && problems[1].contains("com.example.scores"))
        #expect(problems[2].hasPrefix("'\(String(repeating: "x", count: 40))' is not an app id"))
        #expect(!problems[2].contains(String(repeating: "x", count: 41)), "an id is quoted at most 40 characters long")
        #expect(problems[3] == "app 'kids' is given twice")
        #expect(problems[4].hasPrefix("apps 'kids' and 'kids' have the same bundle id com.example.kids"))

        let longBundle = "com.example." + String(repeating: "b", count: 200)
        let cut = AppCatalog.problems(defaultBundleId: longBundle, others: [AppCatalog.App(id: "copy", bundleId: longBundle)])
        #expect(cut.count == 1)
        #expect(cut.first?.contains(String(longBundle.prefix(80))) == true)
        #expect(cut.first?.contains(String(longBundle.prefix(81))) == false, "a bundle id is quoted at most 80 characters long")
    }

    @Test("app ids: 1 to 32 of a-z, 0-9 and -, not starting with -", arguments: [
        ("a", true), ("0", true), ("fantasy", true), ("my-app", true), ("9lives", true), ("trailing-", true),
        ("a--b", true), (String(repeating: "a", count: 32), true), ("default", true),
        ("", false), ("-a", false), ("-", false), ("Fantasy", false), ("FANTASY", false), ("fan tasy", false),
        ("fan_tasy", false), ("fan.tasy", false), ("fan:tasy", false), ("fantasy:dev_1", false), ("é", false),
        ("ｆａｎ", false), (String(repeating: "a", count: 33), false), (" fantasy", false), ("fantasy\n", false),
    ])
    func appIds(id: String, valid: Bool) {
        #expect(AppCatalog.isAppId(id) == valid, "\(id.debugDescription)")
    }
}
