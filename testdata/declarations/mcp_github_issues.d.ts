type CreateIssueInput = {
  /** Repository owner */
  owner: string;
  /** Repository name */
  repo: string;
  /** Issue title */
  title: string;
  /** Issue body */
  body?: string;
  /** Labels to add */
  labels?: string[];
};
/** Create a GitHub issue */
declare function create_issue(args: CreateIssueInput): Promise<unknown>;

type ListIssuesInput = {
  owner: string;
  repo: string;
  state?: "open" | "closed" | "all";
  per_page?: number;
};
/** List issues in a repository */
declare function list_issues(args: ListIssuesInput): Promise<unknown>;
