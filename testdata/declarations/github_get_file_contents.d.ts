type GetFileContentsInput = {
  owner: string;
  repo: string;
  path: string;
  branch?: string;
};
type GetFileContentsOutput = {
  type: "file";
  content: string;
  sha: string;
} | {
  type: "file" | "dir" | "symlink";
  name: string;
  path: string;
}[];
/** Get the contents of a file or directory */
declare function get_file_contents(args: GetFileContentsInput): Promise<GetFileContentsOutput>;
