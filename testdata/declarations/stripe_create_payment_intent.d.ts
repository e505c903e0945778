type CreatePaymentIntentInput = {
  /**
   * Amount in the smallest currency unit
   * @minimum 1
   */
  amount: number;
  /** @pattern ^[a-z]{3}$ */
  currency: string;
  /** @default ["card"] */
  payment_method_types?: string[];
  capture_method?: "automatic" | "automatic_async" | "manual";
  confirm?: boolean;
};
type CreatePaymentIntentOutput = {
  id: string;
  object: "payment_intent";
  status: "requires_payment_method" | "requires_confirmation" | "requires_action" | "processing" | "requires_capture" | "canceled" | "succeeded";
  amount: number;
  client_secret?: string | null;
};
/** Create a PaymentIntent */
declare function create_payment_intent(args: CreatePaymentIntentInput): Promise<CreatePaymentIntentOutput>;
