type ReadFileInput = {
  path: string;
};
/** Read the complete contents of a file from the file system. */
declare function read_file(args: ReadFileInput): Promise<unknown>;

type EditFileInput = {
  path: string;
  edits: {
    /** Text to search for - must match exactly */
    oldText: string;
    /** Text to replace with */
    newText: string;
  }[];
  /**
   * Preview changes using git-style diff format
   * @default false
   */
  dryRun?: boolean;
};
/**
 * Make line-based edits to a text file.
 * Returns a git-style diff.
 */
declare function edit_file(args: EditFileInput): Promise<unknown>;
