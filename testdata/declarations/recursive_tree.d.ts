type TreeNode = {
  name: string;
  children?: TreeNode[];
};
type TreeInput = {
  root?: TreeNode;
};
declare function tree(args: TreeInput): unknown;
