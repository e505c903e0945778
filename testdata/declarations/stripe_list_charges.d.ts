type ListChargesInput = {
  created?: {
    gt?: number;
    gte?: number;
    lt?: number;
    lte?: number;
  } | number;
  /**
   * @minimum 1
   * @maximum 100
   */
  limit?: number;
  starting_after?: string;
};
declare function list_charges(args: ListChargesInput): Promise<unknown>;
