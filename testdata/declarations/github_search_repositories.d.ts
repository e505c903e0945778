type SearchRepositoriesInput = {
  /** Search query (see GitHub search syntax) */
  query: string;
  /**
   * Page number for pagination (default: 1)
   * @minimum 1
   */
  page?: number;
  /**
   * Number of results per page (default: 30, max: 100)
   * @maximum 100
   */
  perPage?: number;
};
type SearchRepositoriesOutput = {
  total_count: number;
  incomplete_results?: boolean;
  items: {
    id: number;
    full_name: string;
    description?: string | null;
    /** @format uri */
    html_url: string;
    stargazers_count?: number;
    topics?: string[];
  }[];
};
/** Search for GitHub repositories */
declare function search_repositories(args: SearchRepositoriesInput): Promise<SearchRepositoriesOutput>;
