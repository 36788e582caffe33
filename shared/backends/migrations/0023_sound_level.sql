-- What a finished render's sound measures (ITU-R BS.1770), in thousandths: integrated
-- loudness in LUFS and true peak in dBTP. NULL for a video without sound or silent.
ALTER TABLE renders ADD COLUMN loudness_milli BIGINT;
ALTER TABLE renders ADD COLUMN true_peak_milli BIGINT;
