/// Every route of the API, collected in one place. Each area of the API has a
/// `func <area>Routes(_ app: AppContext) -> [Route]` in `Routes/` and is listed here.
func allRoutes(_ app: AppContext) -> [Route] {
    serviceRoutes(app) + accountRoutes(app) + libraryRoutes(app) + mappingRoutes(app) + historyRoutes(app) + journalRoutes(app)
        + webhookRoutes(app)
}
