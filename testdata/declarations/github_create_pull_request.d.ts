type CreatePullRequestInput = {
  owner: string;
  repo: string;
  title: string;
  body?: string;
  /** The name of the branch where your changes are implemented */
  head: string;
  /** The name of the branch you want the changes pulled into */
  base: string;
  draft?: boolean;
  /** @default true */
  maintainer_can_modify?: boolean;
};
/** Create a new pull request in a GitHub repository */
declare function create_pull_request(args: CreatePullRequestInput): Promise<unknown>;
