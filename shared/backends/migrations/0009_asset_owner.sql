-- Storage used per user (upload quota, `reelfarm admin usage`) sums the assets a user owns.
CREATE INDEX assets_owner ON assets (owner_user_id);
