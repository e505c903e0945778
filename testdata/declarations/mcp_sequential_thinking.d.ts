type SequentialthinkingInput = {
  thought: string;
  nextThoughtNeeded: boolean;
  /** @minimum 1 */
  thoughtNumber: number;
  /** @minimum 1 */
  totalThoughts: number;
  isRevision?: boolean;
  /** @minimum 1 */
  revisesThought?: number;
  branchId?: string;
};
/** A detailed tool for dynamic and reflective problem-solving through thoughts. */
declare function sequentialthinking(args: SequentialthinkingInput): Promise<unknown>;
