type JiraCreateIssueInput = {
  project: string;
  summary: string;
  /** @default "Task" */
  issue_type?: string;
  fields?: {
    priority?: "Highest" | "High" | "Medium" | "Low" | "Lowest";
  } & { [key: string]: string | number | boolean };
};
declare function jira_create_issue(args: JiraCreateIssueInput): Promise<unknown>;
