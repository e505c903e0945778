type OddNamesInput = {
  "my-key"?: string;
  "with space"?: string;
  "1st"?: number;
  /**
   * line one
   * line two *\/ closed?
   */
  ok_name?: string;
  $ref_like?: string;
};
/** Names that are not identifiers, and a description with a *\/ in it. */
declare function odd_names(args: OddNamesInput): unknown;
