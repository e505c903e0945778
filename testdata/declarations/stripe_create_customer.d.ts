type CreateCustomerAddress = {
  city?: string;
  /** @pattern ^[A-Z]{2}$ */
  country?: string;
  line1?: string;
  postal_code?: string;
};
type CreateCustomerInput = {
  /**
   * @format email
   * @maxLength 512
   */
  email?: string;
  name?: string;
  /** Set of key-value pairs */
  metadata?: { [key: string]: string };
  address?: CreateCustomerAddress;
  shipping?: {
    address: CreateCustomerAddress;
    name: string;
  };
};
/** Create a customer */
declare function create_customer(args: CreateCustomerInput): Promise<unknown>;
