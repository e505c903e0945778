type DataInput = {
  tags?: string[];
  scores?: number[];
};
declare function data(args: DataInput): unknown;
