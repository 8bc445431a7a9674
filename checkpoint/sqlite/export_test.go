package sqlite

// PageRows is the most events one page of Read holds, for the tests that
// read across pages.
const PageRows = pageRows
