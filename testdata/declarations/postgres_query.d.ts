type QueryInput = {
  sql: string;
  params?: (string | number | boolean | null)[];
};
type QueryOutput = {
  rows?: Record<string, unknown>[];
  rowCount?: number;
};
/** Run a read-only SQL query */
declare function query(args: QueryInput): QueryOutput;
