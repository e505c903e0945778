type FetchUrlInput = {
  /**
   * @format uri
   * @minLength 1
   */
  url: string;
  /**
   * @exclusiveMinimum 0
   * @exclusiveMaximum 1000000
   * @default 5000
   */
  max_length?: number;
  /**
   * @minimum 0
   * @default 0
   */
  start_index?: number;
  /** @default false */
  raw?: boolean;
};
/** Fetches a URL from the internet and optionally extracts its contents as markdown. */
declare function fetch_url(args: FetchUrlInput): Promise<unknown>;
