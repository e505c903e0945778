type ConvertTimeInput = {
  /** Source IANA timezone name (e.g., 'America/New_York') */
  source_timezone: string;
  /** Time to convert in 24-hour format (HH:MM) */
  time: string;
  target_timezone: string;
};
type ConvertTimeTimeResult = {
  timezone: string;
  /** @format date-time */
  datetime: string;
  is_dst: boolean;
};
type ConvertTimeOutput = {
  source?: ConvertTimeTimeResult;
  target?: ConvertTimeTimeResult;
  time_difference?: string;
};
declare function convert_time(args: ConvertTimeInput): Promise<ConvertTimeOutput>;
