module github.com/wsgateway/wsgateway

go 1.26.0
